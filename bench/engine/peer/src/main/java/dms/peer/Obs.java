package dms.peer;

/**
 * One observation as Esper sees it: the thing, its type (resolved by the harness, as dms resolves it
 * from the registry), this observation's resources, and the thing's merged state before it (dms's
 * {@code thing.state.*} and the previous position that enter/leave compare with). A resource the
 * observation does not carry is null; a comparison with null is not true in EPL, as a missing
 * resource matches nothing in dms.
 */
public final class Obs {
  String thingName;
  String thingType;
  Double temp;
  Double hum;
  Double press;
  String status;
  Double lat;
  Double lon;
  Double prevTemp;
  Double prevHum;
  Double prevPress;
  String prevStatus;
  Double prevLat;
  Double prevLon;

  public String getThingName() {
    return thingName;
  }

  public String getThingType() {
    return thingType;
  }

  public Double getTemp() {
    return temp;
  }

  public Double getHum() {
    return hum;
  }

  public Double getPress() {
    return press;
  }

  public String getStatus() {
    return status;
  }

  public Double getLat() {
    return lat;
  }

  public Double getLon() {
    return lon;
  }

  public Double getPrevTemp() {
    return prevTemp;
  }

  public Double getPrevHum() {
    return prevHum;
  }

  public Double getPrevPress() {
    return prevPress;
  }

  public String getPrevStatus() {
    return prevStatus;
  }

  public Double getPrevLat() {
    return prevLat;
  }

  public Double getPrevLon() {
    return prevLon;
  }
}
